"""`python -m cli …` is `mnemos …` (for a venv whose scripts are not on PATH)."""

from cli.app import main

main()
