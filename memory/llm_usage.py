"""What one LLM answer cost: its own module so that memory.errors can name it (an unusable answer
carries its usage) without importing the providers' base, which imports memory.errors."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    # Measured by providers that stream: the whole call, and until its first token (on a local
    # server, mostly reading the prompt), so generation speed is known apart from prompt speed.
    seconds: float | None = None
    first_token_seconds: float | None = None
    # Prompt tokens the server took from its prefix cache instead of reading them (when it says).
    cached_input_tokens: int | None = None
