"""The memory scopes the settings name (a word limit, a threshold each), in a module importing
nothing: the prompts and models name them too, and memory/settings.py checks settings against
the prompts (memory/prompt_budget.py), so neither may import memory/settings.py back."""

from __future__ import annotations

from typing import Literal

Scope = Literal["agent", "user", "session"]
