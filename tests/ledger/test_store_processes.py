"""Several processes sharing one store: a budget and a rate limit hold across them all.

Each worker process (spawned, as ``--workers`` and other hosts are) opens the
store by its URL and admits as fast as it can against one key, all starting
together; every worker uses the same ``now``, so the counts are exact: never more
reserved than the budget, never more admitted than the rpm. A key revoked in one
process is refused at once by another that read it before; workers opening a new store
together make its tables once.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.synchronize import Barrier, Event
from typing import Any

from streamfn.ledger import Admitted, ClientKey, Refused, open_store

NOW = 1_800_000_000.0
WORKERS = 4
TRIES = 6


def _admit_many(url: str, key: ClientKey, estimate: float | None, start: Barrier) -> list[float]:
    """The caps of this process's admissions (None caps as 0)."""
    store = open_store(url)
    try:
        start.wait(timeout=60)
        caps = []
        for _ in range(TRIES):
            verdict = store.admit(key, "m", now=NOW, estimate=estimate)
            if isinstance(verdict, Admitted):
                caps.append(verdict.cap or 0.0)
        return caps
    finally:
        store.close()


def _worker(url: str, key: ClientKey, estimate: float | None, start: Barrier, out: object) -> None:
    out.put(_admit_many(url, key, estimate, start))  # type: ignore[attr-defined]


def _in_processes(target: Callable[..., None], *args: object) -> list[Any]:
    """What ``target(*args, start, out)`` put in ``out`` in each of `WORKERS` spawned
    processes, which all begin together at ``start``."""
    spawn = multiprocessing.get_context("spawn")
    start, out = spawn.Barrier(WORKERS), spawn.Queue()
    workers = [spawn.Process(target=target, args=(*args, start, out)) for _ in range(WORKERS)]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    return results


def test_a_budget_holds_across_processes(url: str) -> None:
    store = open_store(url)
    key, _ = store.create_key("shared", now=NOW, budget=1.0, period="total")
    results = _in_processes(_worker, url, key, 0.125)
    caps = [cap for caps in results for cap in caps]
    assert sum(caps) == 1.0 and len(caps) == 8  # spent to the cent, not beyond
    assert sum(1 for caps in results if caps) >= 1
    assert isinstance(store.admit(key, "m", now=NOW, estimate=0.125), Refused)
    store.close()


def test_requests_per_minute_hold_across_processes(url: str) -> None:
    store = open_store(url)
    key, _ = store.create_key("shared", now=NOW, rpm=5)
    results = _in_processes(_worker, url, key, None)
    assert sum(len(caps) for caps in results) == 5
    store.close()


def _admit_after(url: str, secret: str, ready: Event, go: Event, out: object) -> None:
    store = open_store(url)
    key = store.key_for_secret(secret)  # read before the revocation
    assert key is not None and key.revoked_at is None
    ready.set()
    go.wait(timeout=60)
    verdict = store.admit(key, "m", now=NOW + 1, estimate=None)
    out.put(verdict.status if isinstance(verdict, Refused) else 200)  # type: ignore[attr-defined]
    store.close()


def test_a_key_revoked_in_one_process_is_refused_at_once_in_another(url: str) -> None:
    store = open_store(url)
    key, secret = store.create_key("leaked", now=NOW)
    spawn = multiprocessing.get_context("spawn")
    ready, go, out = spawn.Event(), spawn.Event(), spawn.Queue()
    other = spawn.Process(target=_admit_after, args=(url, secret, ready, go, out))
    other.start()
    assert ready.wait(timeout=60)
    store.revoke_key(key.id, now=NOW)
    go.set()
    assert out.get(timeout=60) == 401
    other.join(timeout=60)
    assert other.exitcode == 0
    store.close()


def _open_and_list(url: str, start: Barrier, out: object) -> None:
    start.wait(timeout=60)
    store = open_store(url)
    out.put(len(store.list_keys()))  # type: ignore[attr-defined]
    store.close()


def test_workers_opening_a_new_store_at_once_make_it_once(url: str) -> None:
    assert _in_processes(_open_and_list, url) == [0] * WORKERS
