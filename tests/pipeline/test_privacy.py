"""What agent memory never holds (memory/privacy.py): a person's private details, found by phrases
that are about a person almost wherever they occur, and not the words a business says of its
services."""

from __future__ import annotations

import pytest

from memory.privacy import private_detail


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Dana was diagnosed with asthma in 2024.", "health"),
        ("Dana is pregnant with twins.", "health"),
        ("Sam is allergic to penicillin.", "health"),
        ("Ben's wife Sara works at Lumen Labs.", "family"),
        ("Her younger sister lives in Porto.", "family"),
        ("Jon has two kids.", "family"),
        ("Bob got divorced in 2023.", "relationships"),
        ("Jon and Gina started dating in May.", "relationships"),
        ("Dana's salary is 90,000 EUR.", "finances"),
        ("Jon owes the bank 3,000 dollars.", "finances"),
        ("Contact Ben at ben.k@mail.example.com", "contact data"),
        ("Gina\u2019s phone number is 555-0101.", "contact data"),  # a typographic apostrophe
        ("The wifi password is hunter2.", "identity"),
        ("Sam came out as gay in 2019.", "identity"),
        # A household's details, said as "we": the offline provider reads only "I"/"my" as personal.
        ("We moved to 12 Elm Street in Lisbon last year.", "contact data"),
        ("Call us at +1 555 0100 after 6pm.", "contact data"),
        ("Our flat is at 12 Elm Street, Lisbon.", "contact data"),
        ("We are expecting twins in March 2026.", "health"),
        # Said of a colleague (the owner audit: each reached every user of the agent before).
        ("Tom tested HIV positive in March 2023.", "health"),
        ("Tom takes 40 mg of Prozac every morning since 2023.", "health"),
        ("Tom is seeing a psychiatrist every Monday since 2024.", "health"),
        ("Tom and Anna separated in June 2025.", "relationships"),
        ("Tom earns 3200 euros a month since 2024.", "finances"),
        ("Tom's IBAN is DE89 3704 0044 0532 0130 00.", "finances"),
        ("Tom lives in Rue de la Paix 12 in Lyon since 2021.", "contact data"),
        ("Tom is a Muslim and prays five times a day since 2019.", "identity"),
        ("Tom was arrested for drunk driving in 2022.", "criminal record"),
        # Said of the speaker, the subject left out as models write it, or merged into another
        # fact's text (h180).
        ("Earns 90000 dollars a year", "finances"),
        ("Was born in 1990 in Porto", "identity"),
        ("Is in therapy for depression", "health"),
        ("The clinic opens at 9 am, where the user gets her diabetes treatment", "health"),
        # An amount of money per period (h188), and therapy or care said of a person.
        ("Makes 90000 dollars a year", "finances"),
        ("Earns $40 an hour at the port", "finances"),
        ("Earns 90000 a year", "finances"),
        ("She is in therapy since the accident", "health"),
        ("Dana's cancer treatment starts in May", "health"),
    ],
)
def test_a_persons_private_detail_is_found(text: str, category: str) -> None:
    assert private_detail(text) == category


@pytest.mark.parametrize(
    "text",
    [
        "The clinic's front desk opens at 8:00 on weekdays.",  # check-model's agent-scope case
        "The clinic offers allergy testing on Mondays.",
        "Mortgage rates at the bank are 4.1% in 2026.",
        "Smith & Sons sells hardware since 1950.",
        "The children's books are on the second floor.",
        "Current affairs are discussed on Fridays.",
        "Email support is available from 9:00.",
        "The Mars Festival opens on March 15, 2027 in Lisbon.",
        "Acme Robotics has 40 employees in Berlin.",
        "Gina launched an ad campaign for her clothing store.",
        "The office moved to 12 Elm Street in May.",
        "The support line is +1 555 0100 on weekdays.",
        "Our home page lists the prices.",
        "The Lisbon office address is Rua Augusta 10.",
        "The pharmacy fills prescriptions until 20:00.",
        "The Jewish Museum opens at 10:00 on Sundays.",
        "The shop earned 3 stars from critics.",
        # Tools, plans and files live in places, are separated and earn too (review).
        "Fields in the export file are separated by semicolons",
        "The staging database lives in eu-west-1",
        "The config lives in /etc/mnemos",
        "The Pro plan earns 40 percent of revenue",
        "Deploys run as prescribed by the runbook",
        "The account number field of the invoice form takes 10 digits",
        "Our treatment rooms open at 8:00.",
        "The clinic's treatment plans start at 50 euros.",
        "The clinic specialises in therapy for children.",
        # A card's, a bakery's, a clinic's policy (h188).
        "Earns 2% cashback on every purchase",
        "Earns 500 points a month on the Gold plan",
        "Makes 500 loaves a day",
        "Each patient's treatment plan is reviewed monthly by two doctors",
        "Members who are in therapy get a 10% discount on the gym",
    ],
)
def test_what_a_business_says_of_its_work_is_no_private_detail(text: str) -> None:
    assert private_detail(text) is None
