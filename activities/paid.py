"""What an LLM step's attempts paid for: every answer a provider returned, whatever the step then
made of it, reported once, in the step's result or, when the step fails, in its error.

Each attempt collects the answers returned while it runs (memory.tracing.answers_returned, the
records the worker's metrics count). An attempt that fails sends them on, with those carried from
earlier attempts, in its last heartbeat (memory/pipeline/usage.py says where): the next attempt
reports them too, and the step's final error carries them all in its details, where the workflow
adds them to the run's summary when it goes on (a split, a halving, a fallback). A success reports
them all in its result's ``llm``, which the workflow adds as before."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import beats
from memory import tracing
from memory.pipeline.types import (
    ConsolidationDraft,
    DecisionsResult,
    ExtractedFactsResult,
    LlmCall,
    ReflectionsResult,
)
from memory.pipeline.usage import ERROR_USAGE, HEARTBEAT_USAGE, carried, encoded


@dataclass
class Paid:
    """The answers of this step: the earlier attempts' (``earlier``) and this attempt's."""

    earlier: list[LlmCall]
    answered: list[tracing.Answered] = field(default_factory=list)
    # This attempt's last heartbeat was written (a rejection, activities/heartbeat.py), usage and
    # all: a failure need not write another.
    noted: bool = False

    def calls(self) -> list[LlmCall]:
        return [
            *self.earlier,
            *(
                LlmCall(
                    task=a.task,
                    provider=a.provider,
                    model=a.model,
                    input_tokens=a.input_tokens,
                    output_tokens=a.output_tokens,
                )
                for a in self.answered
            ),
        ]

    def reported[R: (ExtractedFactsResult, DecisionsResult, ReflectionsResult, ConsolidationDraft)](
        self, out: R
    ) -> R:
        """``out`` reporting every answer of the step. Its ``llm`` is replaced, not added to: the
        core lists the answers it used, each from the same request and usage the collector
        recorded when the provider returned it, so the collected list holds those and the ones
        the core did not use (a rejected answer, a second look that was unusable), once each,
        in the order they came. Adding only what the core's list lacks would match the two
        record by record, for the same list. Unless a call the core listed is not among those
        collected (a provider the tracing wrapper never saw): then the core's list stands, with
        the earlier attempts', rather than a report short of what was used."""
        calls = self.calls()
        if Counter(out.llm) - Counter(calls):
            calls = [*self.earlier, *out.llm]
        return out.model_copy(update={"llm": calls})


def beat(reason: str | None, rejections: int, calls: list[LlmCall]) -> None:
    """A failed attempt's last heartbeat, which the next attempt reads (heartbeat.this_attempt,
    ``paying``). [0] and [1] are what older workers read, the usage after them, and only when
    there is some: a step that paid for nothing heartbeats as before."""
    beats.send(reason, rejections, *([encoded(calls)] if calls else []))


def with_usage(err: ApplicationError, calls: list[LlmCall]) -> ApplicationError:
    """``err`` carrying ``calls`` in its details, after the step's own detail (with_halving's;
    None for an error that says nothing else), which older workflow code reads at [0]."""
    said = list(err.details[:ERROR_USAGE]) or [None]
    return ApplicationError(
        err.message,
        *said,
        encoded(calls),
        type=err.type,
        non_retryable=err.non_retryable,
        next_retry_delay=err.next_retry_delay,
        category=err.category,  # a failure the workflow handles stays benign (errors.py)
    )


@contextmanager
def paying() -> Iterator[Paid]:
    """Around an LLM step's whole attempt (outside ``classified``, so its errors are Temporal's):
    the ``Paid`` its result reports (``Paid.reported``); a failure sends them on."""
    info = activity.info()
    with tracing.answers_returned() as answered, beats.holding() as held:
        paid = Paid(carried(info.heartbeat_details, HEARTBEAT_USAGE), answered)
        # The attempt's beats carry what it paid for so far: a timeout keeps them.
        held.paid = lambda: encoded(paid.calls())
        try:
            yield paid
        except Exception as err:
            calls = paid.calls()
            if not calls:
                raise
            if not paid.noted:  # failed otherwise than by a rejection: the record it inherited
                # sent on as it was (an older worker's reason alone, uncounted, stays uncounted).
                beats.send(*beats.head(info.heartbeat_details), encoded(calls))
            if isinstance(err, ApplicationError):
                raise with_usage(err, calls) from err.__cause__
            raise
        finally:
            # The holder is the attempt's (the interceptor's, when there is one), which outlives
            # this step: what a failure paid stays in its details (send, above).
            held.paid = None
