"""A person's private details: what agent memory never holds, whichever way an item was classified.

Agent memory is read by every user of the agent. The extraction prompts ask the models to keep a
person's private details (health, family, relationships, finances, contact data, identity,
criminal record) out
of it (``AGENT_SCOPE_RULE``); this is the same rule in code, so that it holds for a model that
does not follow the prompt, and for the offline provider, which classifies by grammar (there a
specific sentence not in the first person is agent memory: "Dana was diagnosed with asthma in
2024.", said by one user about somebody else). memory/scopes.py places such an item as its
speaker's, or nowhere.

Words, not meaning, so the phrases are the ones that are about a person almost wherever they
occur: "pregnant", "allergic to", "her husband", "Dana's salary", an email address; not the
nouns a business says of its services ("allergy testing", "mortgage rates", "Smith & Sons").
A phrase here that is no private detail in its sentence takes the item out of agent memory
too. That is the safe side: the speaker keeps it as their own memory, where user memory is on.
"""

from __future__ import annotations

import re

# Whose: a possessive, with at most one word between it and the noun ("her younger sister").
_WHOSE = r"(?:his|her|their|my|our|your|\w+'s?)\s+(?:\w+\s+)?"
# Who: a person as the subject, a pronoun or a capitalised name ("Tom lives in", not "the config
# lives in": tools, plans and files live in places, are separated and earn too).
_WHO = r"(?:\b(?:he|she|they|I|we)|(?-i:\b[A-Z][a-z]+))\s+"

_PHRASES: dict[str, tuple[str, ...]] = {
    "health": (
        r"diagnosed",
        r"pregnan(?:t|cy)",
        r"expecting (?:a baby|twins|triplets|a child|our first)",
        r"miscarriage",
        r"allergic",
        r"diabetic",
        r"autistic",
        r"depressed",
        r"hospitali[sz]ed",
        r"addicted",
        r"in rehab",
        r"chemo(?:therapy)?",
        r"suffers? from",
        r"sick leave",
        r"medical condition",
        r"mental health",
        r"tested (?:hiv )?positive",
        r"hiv",
        r"psychiatri(?:st|c)",
        r"psychologist",
        r"antidepressants?",
        r"insulin",
        r"takes \d+ ?mg",
        r"(?:has|had|have|with) (?:cancer|diabetes|asthma|epilepsy|adhd|autism|hiv|depression)",
        _WHOSE + r"(?:illness|disease|surgery|therapy|therapist|medication|prescription)s?",
    ),
    "family": (
        _WHOSE + r"(?:wife|husband|spouse|sons?|daughters?|mother|father|mom|mum|dad|parents"
        r"|sisters?|brothers?|siblings?|grand(?:mother|father|ma|pa)|aunt|uncle|cousins?"
        r"|nephews?|nieces?|in-laws?|kids|children|fianc[eé]e?)",
        r"(?:has|had|have) (?:a|an|one|two|three|four|\d+) (?:sons?|daughters?|kids|children)",
    ),
    "relationships": (
        r"girlfriend",
        r"boyfriend",
        r"divorced?",
        r"divorcing",
        r"married",
        r"broke up",
        r"break-?up",
        r"affair with",
        _WHO
        + r"(?:(?:got|have|has|had|are|were|was|is)\s+)?separated(?!\s+(?:by|into|from the)\b)",
        r"widow(?:ed|er)?",
        r"engaged to",
        r"cheat(?:s|ed|ing) on",
        r"(?:is|are|was|were|been|started|stopped) dating",
    ),
    "finances": (
        _WHOSE + r"(?:salary|income|savings|debts?|loans?|mortgage|paycheck|bank account)",
        r"owes",
        r"in debt",
        r"bankrupt(?:cy)?",
        r"credit score",
        r"credit card number",
        r"iban",
        _WHOSE + r"account number",
        _WHO + r"earns",
    ),
    "contact data": (
        r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
        _WHOSE + r"(?:phone|mobile|cell)(?: number)?",
        r"home address",
        r"lives at",
        _WHO + r"(?:lives|resides) in",
        # A household's, said as "we" (the offline provider reads only "I" and "my" as personal).
        r"(?:call|text|reach|ring) (?:us|me) (?:at|on)",
        _WHOSE + r"(?:flat|apartment|condo)",
        r"(?:we|I|they|he|she) (?:moved|relocated) (?:in)?to \d+",
    ),
    "identity": (
        r"passwords?",
        r"passport",
        r"social security",
        r"ssn",
        r"date of birth",
        r"born on",
        _WHOSE + r"religion",
        r"sexual orientation",
        r"immigration status",
        r"visa status",
        r"(?:is|are|was|came out as) (?:gay|lesbian|bisexual|transgender)",
        r"(?:is|are|was|were|became|converted to) (?:a |an )?(?:muslim|christian|jewish|jew|hindu"
        r"|buddhist|sikh|catholic|protestant|atheist|mormon)s?",
        r"prays",
    ),
    "criminal record": (
        r"arrested",
        r"convicted",
        r"criminal record",
        r"(?:in|went to|out of) (?:prison|jail)",
        r"on (?:probation|parole)",
    ),
}

_PATTERNS = {
    category: re.compile(rf"(?<![\w@.+-])(?:{'|'.join(phrases)})(?![\w@-])", re.IGNORECASE)
    for category, phrases in _PHRASES.items()
}


def private_detail(text: str) -> str | None:
    """The category of the first private detail ``text`` names ("health", "family", …), or None."""
    normalized = text.replace("\u2019", "'")
    for category, pattern in _PATTERNS.items():
        if pattern.search(normalized):
            return category
    return None
