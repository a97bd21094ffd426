"""The patch ids of FormMemories (``workflow.patched``), each with what it changed: a run recorded
before a patch replays its old path, so deployed workers' runs in flight keep replaying."""

# Histories recorded before the fallbacks fail the run where these take them (workflow.patched).
DEGRADED_FALLBACKS = "degraded-fallbacks"
STALE_BACKOFF = "stale-decision-backoff"
# Histories recorded before it took the whole-window fallback of an extraction, and requested
# consolidation after every window instead of once per drain.
SPLIT_WINDOWS = "split-windows"
# From it on, a pass's two short store reads (its window, the dedup candidates) are local
# activities: run by this worker inside the workflow task, recorded as markers, with no round trip
# through the server's task queues (bench/formation.py). Older histories scheduled them.
LOCAL_READS = "local-store-reads"
# From it on, a pass whose commit left the session due again goes round once more by itself: the
# hot path sends one request per formation, not one per turn (memory.triggers.HeldTriggers), so
# what arrived during the pass is formed now, not at the next turn. Older histories ended there.
DUE_AFTER_COMMIT = "due-after-commit"
# From it on, a pass whose commit was discarded because a user of its window was forgotten meanwhile
# (nothing written, not even the cursor) loads its window again, without that user's messages, and
# forms the others' as it was asked. Older histories moved the cursor past the whole window.
AGAIN_AFTER_ERASURE = "again-after-erasure"
# From it on, a forced request (a session end, the cold job) that arrived during a pass whose
# window is formed again forces that pass: older runs reset it and, their window below the
# formation threshold once the forgotten user's messages were gone, ended with it unformed.
AGAIN_KEEPS_FORCE = "again-keeps-force"
# From it on, a forced request that arrived while a run continuing as new requested consolidation
# forces the next run: older runs continued with the force decided before that await, and the next
# one, its messages below the formation threshold, ended with them unformed.
CAN_KEEPS_FORCE = "can-keeps-force"
# From it on, a window whose one message is longer than the formation budget (Window.slices > 1) is
# read slice by slice: an extraction activity per slice, every slice's memories in one commit
# (memory/pipeline/slices.py). Older runs showed the model its first slice, cut with a marker, and
# never loaded a window of more than one slice.
SLICED_MESSAGES = "sliced-messages"
# From it on, a slice of a window of one message (the whole message within the budget) whose first
# read (extract_facts, as before) is full or fails in a way a split can change is read again in
# halves (extract_piece_facts, memory/pipeline/pieces.py), bounded, and up to MAX_DENSE_FACTS of
# the pieces' facts go through the window's one decision and commit. Asked only where a window is
# read otherwise: an ordinary window's history has no marker. Older runs kept each slice's full
# answer, at most facts.max_per_formation facts, and passed over a message whose answer overflowed.
DENSE_MESSAGES = "dense-messages"
# From it on, a split that ended in a single message passed over goes back to the window size of
# before the split once the message after it formed (workflows/drain.py): the failure was that
# message's, not the window's density. Older runs read the rest of their drain at the split's
# smallest size, one message per window after a single refused message.
SPLIT_PASSED_OVER = "split-passed-over"
# From it on, a run continuing as new carries what the drain did so far (and the split in
# progress) to the next run, whose result counts the whole drain; each run's memo and outcome
# still say what that run did. Older runs' results counted the last run only.
DRAIN_TOTALS = "drain-totals"
