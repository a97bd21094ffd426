"""The words the offline decision rules read a fact by (memory/llm/fact_decisions.py): what opens
a relation, which verbs hold one value at a time, what says when rather than what, and the
lead-ins that say nothing of the thing. Shared by the rules that compare facts
(fact_overlap.py)."""

from __future__ import annotations

import re

from memory.fact_words import NEGATIONS as NEGATIONS  # re-exported: the rules read by it
from memory.llm.heuristic_corrections import RESTATING, RESTATING_THAT

TOKEN = re.compile(r"[\w@$.:/,'-]*\w")
# The split also sees a colon or an equals sign between words: "Locker 17 code: 4411".
SPLIT_TOKEN = re.compile(r"[\w@$.:/,'-]*\w'?|(?<!\S)[:=](?!\S)|(?<=\w)[:=](?=\s)")
STOPWORDS = {"a", "an", "the", "do", "does", "did"}
MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august"}
MONTHS |= {"september", "october", "november", "december"}

# What opens a relation. "be" in any form; a colon or equals sign reads as "is".
BE = {"is", "are", "am", "was", "were", "be", "been", "being", ":", "="}
BE |= {"become", "becomes", "became", "remain", "remains", "remained", "stay", "stays", "stayed"}
AUXILIARIES = {"has", "have", "had", "do", "does", "did", "will", "would", "can", "could"}
AUXILIARIES |= {"should", "shall", "must", "might"}  # not "may": a month
ADVERBS = {"now", "still", "also", "just", "only", "always", "often", "usually", "already"}
ADVERBS |= {"currently", "really", "actually", "recently", "again", "anymore", "then", "today"}
PREPOSITIONS = {"in", "at", "on", "for", "as", "to", "from", "with", "by", "into", "until"}
DETERMINERS = {"a", "an", "the", "my", "our", "your", "his", "her", "its", "their", "this"}
DETERMINERS |= {"that", "these", "those", "some", "any", "each", "every"}
# A discourse opener says nothing of the thing: "Sorry, my locker number is 103."; nor does one
# that says the fact is said again ("As Alice said, …", "Remember that …"): left in, it would read
# as part of the subject, and a fact restated would be another thing (ADD), stored twice.
_OPENING_WORDS = (
    r"sorry|oh|ah|well|actually|also|btw|ok|okay|so|yes|no|correction|update|note"
    r"|anyway|now|and|but|plus|fyi|ps|by the way|to be honest|honestly|sadly|unfortunately"
    r"|luckily|finally|apparently"  # no "\w+ly": "Emily, 31, lives in Paris"
    rf"|{RESTATING}"
)
# Each opener is read once, atomically (``(?>…)``, to its word's end): a lead-in's lazy words
# ("as … said") inside a repeated group would otherwise try every split of a text such as "as
# said as said …", exponentially (53 words took 1.3 s, 57 took 3.5 s, on every fact compared).
_ONE_OPENER = rf"(?>(?:{_OPENING_WORDS})\b)"
OPENER = re.compile(
    rf"(?i)^\s*(?:{_ONE_OPENER}[\s,]*)*"
    rf"(?:{_ONE_OPENER}[\s,]*[,:]|{RESTATING_THAT})\s*"
)
INDEFINITE = {"a", "an", "one", "another", "some"}  # "Alice is a teacher": one class of many
# A count said in words opens a list's item as a number does: "a dog and two cats".
COUNTS = {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"}
COUNTS |= {"twelve", "twenty", "dozen", "dozens", "hundreds", "several", "many"}
# Words that say when, not what: another day or time of one thing is a new value of it, as another
# number is ("has a dentist appointment on Monday at 3pm" -> "on Tuesday at 4pm").
WHEN = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today"}
WHEN |= {"tonight", "tomorrow", "yesterday", "morning", "afternoon", "evening", "night", "noon"}
WHEN |= {"midnight", "am", "pm", "day", "week", "weekend", "month", "year", "daily", "weekly"}
WHEN |= {"monthly", "yearly", "next", "last", "this"}

# Verbs whose relation holds one value at a time: a new value replaces the old one.
ONE_VALUE = {"live", "work", "move", "ship", "cost", "start", "begin", "end", "finish", "open"}
ONE_VALUE |= {"close", "expire", "arrive", "leave", "depart", "land", "weigh", "earn", "due"}
ONE_VALUE |= {"born", "call", "name", "marry", "retire", "graduate", "relocate"}
# Verbs that may hold many values ("likes pizza", "likes sushi"); known, so the split finds them.
MANY_VALUES = {"like", "love", "hate", "prefer", "enjoy", "want", "need", "own", "play", "speak"}
MANY_VALUES |= {"use", "visit", "know", "study", "teach", "drive", "read", "watch", "eat", "drink"}
MANY_VALUES |= {"collect", "support", "attend", "go", "plan", "take", "keep", "make", "meet"}
MANY_VALUES |= {"follow", "write", "cook", "run", "travel", "volunteer", "change", "adopt"}
IRREGULAR = {
    **{"has": "have", "had": "have", "began": "begin", "begun": "begin", "paid": "pay"},
    **{"left": "leave", "went": "go", "goes": "go", "took": "take", "kept": "keep"},
    **{"made": "make", "met": "meet", "ate": "eat", "drank": "drink", "taught": "teach"},
    **{"spoke": "speak", "drove": "drive", "wrote": "write", "ran": "run"},
    **{"studies": "study", "studied": "study"},
    **{"dislike": "like", "dislikes": "like", "disliked": "like"},  # negated: see parse_fact
}
# A verb's bare form reads as a verb after a plural subject ("Tom's parents live in Rome"), but
# only for verbs that are seldom nouns: "work", "call", "name" and "end" are nouns as often.
BARE_VERBS = {"live", "like", "love", "hate", "prefer", "enjoy", "want", "need", "own", "speak"}
BARE_VERBS |= {"dislike", "have"}
