"""The private categories the README names (contact data, finances, identity) as a reader would
list them: an address, a number to reach someone by, a salary, a card, a PIN, debts, a birth date
or place, an identity document, immigration status. Each is found however it is said of a
person, and its look-alike is not: an office's address and a support line said as such, a
role's salary bands, an API's documentation, a favourite number stay what every user of the
agent may read."""

from __future__ import annotations

import pytest

from memory.privacy import private_detail

PAIRS = [
    # contact data
    (
        "Dana's address is 12 Elm Street in Springfield.",
        "The office is at 12 Elm Street since May 2024.",
        "contact data",
    ),
    (
        "Dana's number is 555-0101 if you need her.",
        "The support number is 555-0100 on weekdays.",
        "contact data",
    ),
    (
        "Call Dana on 555-0101 after six.",
        "Call the front desk on 555-0100 after six.",
        "contact data",
    ),
    (
        "His postcode is SW1A 1AA since 2024.",
        "The postcode field of the form takes 8 characters.",
        "contact data",
    ),
    ("Tom lives on Baker Street since 2020.", "The config lives on the NFS share.", "contact data"),
    # finances
    (
        "Salary is 90000 dollars a year before tax.",
        "The salary bands for the role are on the wiki since 2024.",
        "finances",
    ),
    (
        "Ben's credit card is 4111 1111 1111 1111.",
        "The shop accepts credit cards since 2021.",
        "finances",
    ),
    (
        "The card 4111 1111 1111 1111 expires in 09/27.",
        "Invoice 2024-0117 is due on 1 March.",
        "finances",
    ),
    ("Ben's PIN is 4471.", "Pin the release notes to the channel by 5pm.", "finances"),
    ("Dana's sort code is 20-00-00.", "Sort the 2024 reports by date.", "finances"),
    ("Dana's number is 555-0101.", "Dana's favourite number is 7 since 2020.", "contact data"),
    (
        "Ben has 20000 dollars of student debt.",
        "The project has no technical debt since 2024.",
        "finances",
    ),
    ("Dana's rent is 900 euros a month.", "The office rent is 3000 euros a month.", "finances"),
    # identity
    (
        "Born in 1985 in Lyon, grew up in Marseille.",
        "The Mars Festival was founded in 1985 in Lyon.",
        "identity",
    ),
    ("Dana's birthday is on 3 May.", "The Birthday Cafe opens at 8:00 on Sundays.", "identity"),
    (
        "Ben is undocumented and came to the US in 2010.",
        "The v2 API is undocumented since 2024.",
        "identity",
    ),
    (
        "Dana applied for asylum in Germany in 2019.",
        "The Asylum Museum opens at 10:00 on Sundays.",
        "identity",
    ),
    (
        "Ben's work permit expires in June 2027.",
        "The work plan for June 2027 is on the wiki.",
        "identity",
    ),
    (
        "Ben's driver's license was suspended in 2023.",
        "The license key for the build server is in the vault.",
        "identity",
    ),
]


@pytest.mark.parametrize(("private", "business", "category"), PAIRS)
def test_a_private_category_is_found_and_its_business_look_alike_is_not(
    private: str, business: str, category: str
) -> None:
    assert (private_detail(private), private_detail(business)) == (category, None)


# What a business says of its own, its customers in general, a role, a product or a crowd, with
# the same nouns (review H108): no person's detail, and agent memory where it belongs.
BUSINESS = [
    "The store's address is 5 Main St.",
    "Customers must confirm their address at checkout.",
    "Customers can pay with their debit card or PayPal.",
    "Customers can reach Support at 555-0100.",
    "Call Sales on 0800 123 456 for quotes.",
    "Avogadro's number is 6.022e23.",
    "The Senior Engineer position offers a salary of $150,000.",
    "The starting salary is $60,000 for junior roles.",
    "The charity helps Ukrainian refugees find housing.",
    "Most asylum seekers wait six months for a decision.",
    "It is undocumented, so use the v2 endpoint instead.",
    "The batch endpoints exist but they are undocumented.",
    "Green card applications take about 8 months.",
    "Work permit processing takes 3 months.",
    "The firm handles deportation cases.",
    "US student debt totals $1.7 trillion.",
    "Never ask customers for the CVV.",
    "Reset your PIN in the mobile app under Settings.",
    "Our rent for the warehouse is $4,000 a month.",
    "The project's net worth estimate is $3M.",
    "Config lives on S3.",
    "The company's home is in Berlin.",
    "The team's nationality mix is diverse.",
]


@pytest.mark.parametrize("said", BUSINESS)
def test_what_a_business_says_of_its_own_is_no_private_detail(said: str) -> None:
    assert private_detail(said) is None
