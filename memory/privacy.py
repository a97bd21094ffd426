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
# Whose, of a person: not "the store's", "the company's", nor "our" (a business says "our
# address" of its own), for what a business has too: an address, a home, a nationality.
_A_PERSONS = r"(?:his|her|their|my|your|(?<![Tt]he )(?<![Aa] )(?<![Oo]ur )\b\w+'s?)\s+(?:\w+\s+)?"
# Whose, of a person said by a pronoun or a name ("her", "Dana's"): not "each patient's", a
# business's words for whom it serves.
_NAMED_PERSONS = (
    r"(?:his|her|their|my|your|(?:user|customer|client|caller)'s?"
    r"|(?<![Tt]he )(?<![Aa] )(?<![Oo]ur )(?-i:\b[A-Z][a-z]+)'s?)\s+(?:\w+\s+)?"
)
# An amount of money in a period: "90000 dollars a year", "$40 an hour", "about 5k euros a month".
_PAY = (
    r"(?:about |around |over |nearly )?(?:[$\u20ac\u00a3] ?\d[\d,.]*k?"
    r"|\d[\d,.]*k? ?(?:dollars|euros|pounds|usd|eur|gbp|bucks))"
    r" (?:a|an|per) (?:year|month|week|day|hour)"
)
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
        # A person's care, whose said by a pronoun or a name ("her diabetes treatment", "Dana's
        # diagnosis"), not a business's ("our treatment rooms", "each patient's treatment plan").
        _NAMED_PERSONS + r"(?:treatments?|diagnos[ie]s)",
        # Therapy said of a person ("she is in therapy") or, its subject left out, of the speaker
        # ("Is in therapy for depression"); not of whom a business serves ("Members who are in
        # therapy get a discount").
        _WHO + r"(?:(?:is|was|are|were|has been|have been|goes|went|started|began) )(?:in|to)"
        r" therapy",
        r"(?:^|(?<=:)|(?<=: ))(?:is|was|am|goes|went|started|began) (?:in|to) therapy",
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
        # Not "rent" nor "net worth": "our rent for the warehouse", "the project's net worth"
        # are a business's. A card, or its number, as said of whose it is ("Ben's credit card is
        # 4111 …"), not a way to pay ("pay with their debit card").
        _WHOSE + r"(?:salary|income|wages|savings|debts?|loans?|mortgage|paycheck|pension"
        r"|tax return|bank (?:account|details)|credit limit|(?:account|card|routing) number"
        r"|sort code|(?:credit|debit|bank) card (?:number|details|is|was|ends))",
        r"owes",
        r"in debt",
        # A person's debts, not a country's ("US student debt totals $1.7 trillion").
        _WHOSE + r"(?:student|medical|gambling|credit card) debts?",
        r"(?:has|had|have) (?:[\w$,.]+ ){0,2}(?:in |of )?(?:student|medical|gambling|credit card)"
        r" debts?",
        _A_PERSONS + r"rent",  # "Dana's rent", not "our rent for the warehouse"
        r"bankrupt(?:cy)?",
        r"credit score",
        r"credit card number",
        r"iban",
        # A card's number, a PIN or a card's code with its value: what pays for somebody,
        # whoever says it; not the word alone ("Reset your PIN in the app", "Never ask for the
        # CVV"). "PIN" in capitals: a pin is also what holds a note to a board.
        r"(?:\d{4}[ -]?){3}\d{4}",
        r"\d{4}[ -]?\d{6}[ -]?\d{5}",
        r"(?:(?-i:PIN)|pin (?:code|number))(?: code| number)? (?:is|was|:) ?\d+",
        r"(?:cvv|cvc)(?: code)? (?:is|was|:) ?\d+",
        # A pay figure said without whose it is opens what is said: the speaker's ("Salary is
        # 90000 dollars", "Alice said: Salary is …"); "The starting salary is …", "offers a
        # salary of …" are a role's.
        r"(?:^|(?<=:)|(?<=: ))(?:annual |yearly |monthly |gross |net )?salary (?:is|was)",
        # So does what somebody earns, their subject left out: an amount of money in a period
        # ("Earns 90000 dollars a year", "Makes $40 an hour"), not "Earns 2% cashback on every
        # purchase", a card's, nor "Makes 500 loaves a day", a bakery's.
        r"(?:^|(?<=:)|(?<=: ))(?:earn(?:s|ed)|makes|made) " + _PAY,
        # A bare number is pay only earned ("Earns 90000 a year"): "Makes 500 a day" is a count.
        r"(?:^|(?<=:)|(?<=: ))earn(?:s|ed) (?:about |around |over |nearly )?\d[\d,.]*k?"
        r" (?:a|an|per) (?:year|month|week|day|hour)",
        _WHO + r"earns",
    ),
    "contact data": (
        r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
        # Whose address or number it is, with it: "Dana's address is …", "her number is …"; not
        # "the support number" nor "The office is at 12 Elm Street", a business's own, said as
        # such, nor "confirm their address at checkout". A number is a phone's only right after
        # whose it is, and written as one: "my favourite number is 7", "Avogadro's number" are not.
        _WHOSE + r"(?:phone|mobile|cell|landline|whatsapp)",
        _A_PERSONS + r"(?:address|postcode|zip code) (?:is|was|:)",
        r"(?:his|her|their|my|our|your|\w+'s?)\s+number (?:is|was|:) ?\+?\d[\d ().-]{6,}",
        _A_PERSONS + r"(?:home|house) (?:is )?(?:at|on|in)",
        r"home address",
        r"lives at",
        _WHO + r"(?:lives|resides) in",
        # On a street, not "Config lives on S3".
        _WHO + r"(?:lives|resides) on (?-i:[A-Z]\w+ )+(?:street|st|road|rd|avenue|ave|lane|ln"
        r"|drive|dr|boulevard|blvd|way|place|court|square)",
        # A number to reach a person by ("Call Dana on 555-0101"), not a desk or a line ("reach
        # Support at 555-0100").
        r"(?:call|text|reach|ring|phone|whatsapp) (?:him|her|them|(?-i:(?!(?:Support|Sales"
        r"|Reception|Billing|Customer|Service|Help|Front|Accounts|Security|Emergency)\b)[A-Z][a-z]+))"
        r" (?:at|on) \+?\d[\d ().-]*\d",
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
        r"place of birth",
        # Born on a date, or in a place or year as said of someone: a person's, or what looks
        # like one ("Python was born in 1991" too: the safe side); the elliptic answer "Born in
        # 1985 in Lyon" opens its sentence. Not "founded in", "created in".
        r"born on",
        _WHO + r"(?:was|were) born (?:in|at)",
        # "Was born in 1990 in Porto": its subject left out, as models write of the speaker.
        r"(?:^|(?<=:)|(?<=: ))(?:(?:was|were) )?born (?:in|at)",
        _A_PERSONS + r"(?:birthday|birth ?date|birthplace|religion|citizenship|nationality)",
        # Documents a person is identified by.
        r"driver'?s licen[cs]e",
        r"(?:national|personal|government)[ -]id",
        r"id card",
        r"national insurance number",
        r"tax(?:payer)? (?:id|identification number)",
        # Immigration status: a person's, said of them with a verb ("Ben is undocumented", "they
        # are refugees"); an API is undocumented too ("It is undocumented", "they are
        # undocumented"), so that word only of a name or he/she, and no noun of a group said of
        # a crowd ("Most asylum seekers wait", "helps Ukrainian refugees").
        r"(?:\b(?:he|she)|(?-i:\b(?!(?:It|This|That|There|These|Those)\b)[A-Z][a-z]+))"
        r" (?:is|was|has been|remains) undocumented",
        _WHO + r"(?:is|are|was|were|has been|have been) (?:an? )?(?:illegal immigrants?"
        r"|asylum seekers?|refugees?)",
        r"undocumented (?:immigrants?|migrants?|workers?)",
        r"illegal(?:ly)? (?:immigrants?|aliens?|in the country)",
        r"(?:applied|applying|applies|granted|seeking|sought|claimed|claiming|got|received)"
        r" (?:for )?asylum",
        # A person's papers, not a process's ("Green card applications take 8 months").
        r"(?:has|had|have|got|received|holds?|applied for|applying for|needs?) (?:a |an |his |her"
        r" |their |my |our )?(?:green card|(?:work|residence|residency) permit)",
        _WHOSE + r"(?:green card|(?:work|residence|residency) permit|visa)",
        r"(?:was|were|been|be|got|is|are|being) deported|facing deportation|deportation order",
        r"overst(?:ay|ays|ayed|aying) (?:a |an |his |her |their |my |our )?visa",
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
