"""Many streams, one model: a queue that runs compatible requests as CTranslate2 batches.

Why batches: decoding one token reads every weight of the model; a batch of
eight reads them once for eight tokens, so on a CPU the aggregate tokens/s
grows with the batch while each stream slows a little (see the local
concurrency benchmark in the documentation). CTranslate2's ``generate_batch`` calls a step
callback for every token of every batch index and stops an index when the
callback returns ``True``, which is all a stream needs: its tokens as they
come, and a way to stop within one token.

What CTranslate2 cannot do is add a sequence to a batch that is running. So:

- Up to ``parallel_batches`` batches run at once (lanes; the generator's
  ``inter_threads``, one replica each sharing the weights), each up to
  ``max_batch_size`` streams. A request that finds a lane idle starts at once.
- Otherwise it waits in a FIFO queue. When a lane's batch ends, the lane takes
  the oldest waiting request plus the next compatible ones (an even share of
  the work in sight, so lanes run batches of similar size).
- A request that could join a young running batch (same settings, room, a
  context of similar length) makes the emptiest such batch restart at once
  with the newcomer, its own streams first; this is as close to continuous
  batching as CTranslate2 allows.
- The wait is bounded: when the oldest request has waited ``max_queue_wait``
  seconds and every lane is busy, the batch that started first yields at its
  next step (after a slice of at least ``SLICE_PER_PREFILL`` times its
  first-token time, so re-reading its context stays a small share). Its
  unfinished streams go to the back of the queue and later resume from their
  prompt plus the tokens already generated (CTranslate2 re-reads that context
  in one forward pass), so nobody is starved and every stream keeps its place
  in the answer (round-robin time slices).
- Compatible means the same sampling settings (CTranslate2 takes one
  ``sampling_topk``/``topp``/``temperature`` per call; ``max_tokens`` and
  ``stop`` are per stream, enforced here and in the decoder) and prompts of
  similar length: CTranslate2 reads the shortest prompt of a batch in one
  pass and feeds the rest of longer prompts one token per step, so a much
  longer prompt would reach its first token slowly. Seeded sampling runs
  alone on a freshly seeded generator and is never preempted (a seed names
  one random stream, which a shared batch or a resume would change); a
  stream with a repetition guard is never preempted either (`Plan.resumable`).

The module is thread code: the scheduler's state is guarded by one lock, and
a job belongs either to the queue or to exactly one running batch. Every job
gets exactly one terminal item (`END` or an exception) through its ``post``
function, after which the scheduler never touches it again; streams wait for
that before they close, so no generation outlives its stream.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from streamfn.core import Options

__all__ = ["END", "BatchScheduler", "Item", "Job", "Plan", "is_last"]


class _End:
    """Sentinel: generation for this job is over."""


END: Final = _End()
Item = int | _End | BaseException


def is_last(item: Item) -> bool:
    """Whether ``item`` is a job's terminal item (`END` or an exception), not a token id."""
    return not isinstance(item, int)


#: prompts in one batch differ by at most this many tokens (see the module docstring)
PROMPT_LENGTH_SLACK: Final = 64
#: a batch's time slice is at least this many times what its resume will cost (its
#: first-token time), so time-slicing spends at most about a fifth on re-reading context
SLICE_PER_PREFILL: Final = 5.0


@dataclass(frozen=True, slots=True)
class Plan:
    """What one generation needs, decided before it is queued."""

    prompt: list[str]
    max_tokens: int
    sampling: dict[str, Any]
    seed: int | None
    start_in_thinking: bool
    options: Options

    def sampling_key(self) -> tuple[Any, ...]:
        return tuple(sorted(self.sampling.items()))

    @property
    def resumable(self) -> bool:
        """Whether a yield and a resume leave the output unchanged: not for a seed (one
        random stream) nor a repetition guard (CTranslate2 counts one call's tokens)."""
        guarded = "repetition_penalty" in self.sampling or "no_repeat_ngram_size" in self.sampling
        return self.seed is None and not guarded


class Job:
    """One stream's generation: posts token ids, stops on request, resumes after a yield.

    The job never holds the generator: CTranslate2 may keep the step callback
    alive, and a callback reaching its own generator would make a cycle the
    garbage collector cannot see.
    """

    def __init__(
        self, plan: Plan, post: Callable[[Item], None], end_ids: frozenset[int] = frozenset()
    ) -> None:
        self.plan = plan
        self.post = post
        #: token ids that end generation; the job stops at once instead of at the batch's end
        self.end_ids = end_ids
        self.stop = threading.Event()
        #: set once the terminal item is posted; the scheduler is done with the job
        self.released = threading.Event()
        #: generated token strings, the continuation a resumed job is fed back
        self.generated: list[str] = []
        self.queued_at = 0.0

    @property
    def remaining(self) -> int:
        return self.plan.max_tokens - len(self.generated)

    def context(self) -> list[str]:
        return self.plan.prompt + self.generated

    def _on_step(self, step: Any) -> bool:
        """Post one generated token; ``True`` when this job wants no more tokens."""
        if self.stop.is_set():
            return True
        token_id = int(step.token_id)
        self.generated.append(str(step.token))
        self.post(token_id)
        return self.stop.is_set() or token_id in self.end_ids or self.remaining <= 0

    def release(self, item: Item = END) -> None:
        if not self.released.is_set():
            self.post(item)
            self.released.set()


class Engine(Protocol):
    """The model as a lane sees it: one ``generate_batch`` call (it raises once closed)."""

    def _generate(
        self,
        contexts: list[list[str]],
        *,
        max_length: int,
        sampling: dict[str, Any],
        seed: int | None,
        callback: Callable[[Any], bool],
    ) -> None: ...


class _Batch:
    """Jobs running in one ``generate_batch`` call; its step callback dispatches by index."""

    def __init__(self, jobs: list[Job], scheduler: BatchScheduler) -> None:
        self.jobs = jobs
        self.started = scheduler._clock()
        self.preemptible = all(job.plan.resumable for job in jobs)
        #: set once the batch gives up its lane: "merge" (keep place) or "turn" (go to the back)
        self.yielding: str | None = None
        self.yielded: list[Job] = []
        self._checked_step = -1
        self._scheduler = scheduler
        #: seconds from the call to the first token: what resuming this batch costs again
        self.prefill = 0.0

    def live(self) -> list[Job]:
        return [j for j in self.jobs if not j.released.is_set() and j not in self.yielded]

    def on_step(self, step: Any) -> bool:
        job = self.jobs[step.batch_id]
        if self._checked_step < 0:
            self.prefill = self._scheduler._clock() - self.started
        if job.released.is_set() or job in self.yielded:
            return True
        if job._on_step(step):
            job.release()
            return True
        if self.yielding is None and step.step != self._checked_step:
            self._checked_step = step.step  # decided once per decoding step
            self.yielding = self._scheduler._yield_reason(self)
        if self.yielding is not None:
            self.yielded.append(job)  # its tokens so far are posted and kept for the resume
            return True
        return False


class BatchScheduler:
    """The queue and lanes of one model (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        *,
        max_batch_size: int,
        parallel_batches: int,
        max_queue_wait: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_batch_size < 1 or parallel_batches < 1 or max_queue_wait < 0:
            raise ValueError(
                "max_batch_size and parallel_batches must be >= 1 and max_queue_wait >= 0"
            )
        # weak: a lane must not keep a dropped model (and its generator) alive
        self._engine = weakref.ref(engine)
        self.max_batch_size = max_batch_size
        self.parallel_batches = parallel_batches
        self.max_queue_wait = max_queue_wait
        self._clock = clock
        self._lock = threading.Lock()
        self._lanes_done = threading.Condition(self._lock)
        self._queue: deque[Job] = deque()
        self._running: list[_Batch] = []
        self._lanes = 0
        #: sizes of the batches run, most recent last (diagnostics and tests)
        self.history: deque[int] = deque(maxlen=256)

    # -- the streams' side ------------------------------------------------
    def submit(self, job: Job) -> None:
        """Queue a job; start a lane if one is free. Never blocks on generation."""
        with self._lock:
            job.queued_at = self._clock()
            self._queue.append(job)
            if self._lanes < self.parallel_batches:
                self._lanes += 1
                threading.Thread(target=self._lane, name="streamfn-local", daemon=True).start()

    def withdraw(self, job: Job) -> None:
        """The stream is closing: stop the job; a queued job is released at once."""
        job.stop.set()
        with self._lock:
            queued = job in self._queue
            if queued:
                self._queue.remove(job)
        if queued:
            job.release()

    def shutdown(self, error: BaseException) -> None:
        """Fail queued jobs with ``error``, stop running ones, and wait for every lane to exit.

        A lane must not outlive the model: CTranslate2 aborts the process when a
        generator is destroyed on a thread during interpreter shutdown.
        """
        with self._lock:
            queued = list(self._queue)
            self._queue.clear()
            for batch in self._running:
                for job in batch.jobs:
                    job.stop.set()
        for job in queued:
            job.stop.set()
            job.release(error)
        with self._lock:
            self._lanes_done.wait_for(lambda: self._lanes == 0)

    @property
    def idle(self) -> bool:
        with self._lock:
            return not self._queue and self._lanes == 0

    # -- lanes -------------------------------------------------------------
    def _lane(self) -> None:
        while True:
            with self._lock:
                batch = self._take()
                if batch is None:
                    self._lanes -= 1
                    self._lanes_done.notify_all()
                    return
                self._running.append(batch)
            try:
                self._run(batch)
            finally:
                with self._lock:
                    self._running.remove(batch)
                    resumed = [j for j in batch.yielded if not j.stop.is_set()]
                    for job in resumed:
                        job.queued_at = self._clock()
                    if batch.yielding == "merge":
                        self._queue.extendleft(reversed(resumed))
                    else:
                        self._queue.extend(resumed)
                for job in batch.jobs:
                    if job.stop.is_set() or job not in batch.yielded:
                        job.release()

    def _take(self) -> _Batch | None:
        """The oldest live job and the queued jobs that can share its batch (lock held)."""
        while self._queue and self._queue[0].stop.is_set():
            self._queue.popleft().release()
        if not self._queue:
            return None
        # an even share of the work in sight, so the lanes run batches of similar size
        in_sight = len(self._queue) + sum(len(b.live()) for b in self._running)
        limit = min(self.max_batch_size, -(-in_sight // self.parallel_batches))
        head = self._queue.popleft()
        jobs = [head]
        for job in list(self._queue):
            if len(jobs) >= limit:
                break
            if self._joins(job, head):
                self._queue.remove(job)
                jobs.append(job)
        self.history.append(len(jobs))
        return _Batch(jobs, self)

    def _joins(self, job: Job, head: Job) -> bool:
        """May ``job`` share a batch whose first job is ``head``?"""
        return (
            job.plan.seed is None
            and head.plan.seed is None
            and not job.stop.is_set()
            and job.plan.sampling_key() == head.plan.sampling_key()
            and abs(len(job.plan.prompt) + len(job.generated) - len(head.context()))
            <= PROMPT_LENGTH_SLACK
        )

    def _yield_reason(self, batch: _Batch) -> str | None:
        """Once per step of a running batch: should it give up its lane, and why?

        ``"merge"``: a queued request could share this batch (it has room and
        is the emptiest running batch); the batch restarts at once with the
        newcomer, its own streams first, re-reading their context so far.
        ``"turn"``: the oldest request has waited ``max_queue_wait`` and this
        is the longest-running batch; its streams go to the back of the queue.
        """
        if not self._queue or not batch.preemptible:  # unlocked peek: a stale answer costs a step
            return None
        with self._lock:
            live = batch.live()
            if not self._queue or not live or self._lanes < self.parallel_batches:
                return None  # nothing waits, or a lane is free to take it
            running = [b for b in self._running if b.preemptible and b.yielding is None]
            if (
                len(live) < self.max_batch_size
                and len(live) <= min(len(b.live()) for b in running)
                and any(self._joins(job, live[0]) for job in self._queue)
            ):
                return "merge"
            now = self._clock()
            if now - self._queue[0].queued_at < self.max_queue_wait:
                return None
            if now - batch.started < max(self.max_queue_wait, SLICE_PER_PREFILL * batch.prefill):
                return None  # a full slice first, long enough that re-reading stays cheap
            return "turn" if min(running, key=lambda b: b.started) is batch else None

    def _run(self, batch: _Batch) -> None:
        engine = self._engine()
        live = [job for job in batch.jobs if not job.stop.is_set()]
        if engine is None or not live:
            return
        plan = batch.jobs[0].plan
        try:
            engine._generate(
                [job.context() for job in batch.jobs],
                max_length=max(job.remaining for job in batch.jobs),
                sampling=plan.sampling,
                seed=plan.seed,
                callback=batch.on_step,
            )
        except BaseException as exc:  # delivered to every stream of the batch as an Error event
            for job in batch.jobs:
                job.release(exc)
