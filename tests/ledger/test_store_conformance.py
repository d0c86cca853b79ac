"""Every store behaves as the memory reference does: keys, admission, leases, usage, reports.

One suite, run on MemoryStore, SQLite and a real PostgreSQL server: a store that
disagrees with the reference on any decision or record fails here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

from streamfn.ledger import Admitted, Refused, Store, UsageRecord
from streamfn.ledger._report import totals

T0 = dt.datetime(2026, 3, 4, 12, tzinfo=dt.UTC).timestamp()  # a Wednesday
DAY = 86400.0


def record(key_id: str | None, at: float, **fields: object) -> UsageRecord:
    given: dict[str, object] = {"route": "/v1/chat/completions", "model": "m", **fields}
    return UsageRecord(at=at, key_id=key_id, **given)  # type: ignore[arg-type]


def admitted(verdict: Admitted | Refused) -> Admitted:
    assert isinstance(verdict, Admitted), verdict
    return verdict


def refused(verdict: Admitted | Refused, status: int) -> Refused:
    assert isinstance(verdict, Refused), verdict
    assert verdict.status == status, verdict
    return verdict


def test_create_list_and_find_by_secret(store: Store) -> None:
    first, secret = store.create_key(
        "ci", now=T0, models=("a", "b"), budget=5.0, period="week", rpm=3, tpm=900,
        expires_at=T0 + DAY,
    )  # fmt: skip
    second, other = store.create_key("laptop", now=T0 + 1)
    assert secret.startswith("sfn-") and secret != other
    assert store.list_keys() == [first, second]
    assert (first.models, first.budget, first.period, first.rpm, first.tpm) == (
        ("a", "b"), 5.0, "week", 3, 900,
    )  # fmt: skip
    assert first.expires_at == T0 + DAY and first.revoked_at is None
    assert store.key_for_secret(secret) == first
    assert store.key_for_secret(other) == second
    assert store.key_for_secret("sfn-" + "x" * 43) is None
    assert store.key_for_secret("") is None
    assert secret not in repr(store.list_keys())


def test_rotate_keeps_the_key_and_retires_the_old_secret(store: Store) -> None:
    key, old = store.create_key("ci", now=T0, budget=2.0)
    new = store.rotate_key(key.id, now=T0 + 5)
    assert new != old and new.startswith("sfn-")
    assert store.key_for_secret(old) is None
    assert store.key_for_secret(new) == key


def test_revoke_refuses_at_once_even_a_key_read_before(store: Store) -> None:
    key, secret = store.create_key("ci", now=T0)
    store.revoke_key(key.id, now=T0 + 10)
    (listed,) = store.list_keys()
    assert listed.revoked_at == T0 + 10
    assert store.key_for_secret(secret) == listed  # found, so the gateway can say why
    refused(store.admit(key, "m", now=T0 + 11, estimate=0.1), 401)  # the stale copy


@pytest.mark.parametrize("method", ["rotate_key", "revoke_key", "spent"])
def test_an_unknown_id_is_a_lookup_error_naming_it(store: Store, method: str) -> None:
    with pytest.raises(LookupError, match="key_nope"):
        getattr(store, method)("key_nope", now=T0)


def test_expired_key_and_model_list(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, models=("a",), expires_at=T0 + 60)
    admitted(store.admit(key, "a", now=T0 + 1, estimate=None))
    assert "'b'" in refused(store.admit(key, "b", now=T0 + 2, estimate=None), 403).reason
    expired = refused(store.admit(key, "a", now=T0 + 60, estimate=None), 401).reason
    # each names the way out: the client cannot mend the key, its operator can
    assert "expired" in expired and "ask the gateway's operator for a new one" in expired
    assert "GET /v1/models" in refused(store.admit(key, "b", now=T0 + 2, estimate=None), 403).reason


def test_requests_per_minute_with_retry_after(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, rpm=2)
    admitted(store.admit(key, "m", now=T0, estimate=None))
    admitted(store.admit(key, "m", now=T0 + 10, estimate=None))
    verdict = refused(store.admit(key, "m", now=T0 + 20, estimate=None), 429)
    assert verdict.retry_after == 40.0  # the oldest admission leaves the window at T0 + 60
    refused(store.admit(key, "m", now=T0 + 59, estimate=None), 429)  # refusals do not count
    admitted(store.admit(key, "m", now=T0 + 60.5, estimate=None))
    other, _ = store.create_key("other", now=T0, rpm=1)
    admitted(store.admit(other, "m", now=T0 + 61, estimate=None))  # keys do not share


def test_tokens_per_minute_counts_settled_requests(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, tpm=1000)
    lease = admitted(store.admit(key, "m", now=T0, estimate=None)).lease
    store.settle(lease, record(key.id, T0, input_tokens=600, cached_tokens=100, output_tokens=200))
    lease = admitted(store.admit(key, "m", now=T0 + 5, estimate=None)).lease
    store.settle(lease, record(key.id, T0 + 5, output_tokens=100, reasoning_tokens=50))
    verdict = refused(store.admit(key, "m", now=T0 + 30, estimate=None), 429)
    assert verdict.retry_after == 30.0  # once the first request's 900 tokens leave
    admitted(store.admit(key, "m", now=T0 + 61, estimate=None))


def test_a_long_stream_counts_against_tokens_per_minute_when_it_ends(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, tpm=1000)
    lease = admitted(store.admit(key, "m", now=T0, estimate=None)).lease
    # arrived at T0, streamed for five minutes
    store.settle(lease, record(key.id, T0, output_tokens=1000, latency=300.0))
    verdict = refused(store.admit(key, "m", now=T0 + 310, estimate=None), 429)
    assert verdict.retry_after == 50.0  # it ended at T0 + 300
    admitted(store.admit(key, "m", now=T0 + 361, estimate=None))


def test_budget_caps_reserves_and_refuses(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, budget=1.0, period="total")
    unbudgeted, _ = store.create_key("free", now=T0)
    assert admitted(store.admit(unbudgeted, "m", now=T0, estimate=None)).cap is None
    a = admitted(store.admit(key, "m", now=T0, estimate=0.5))
    b = admitted(store.admit(key, "m", now=T0 + 1, estimate=0.75))
    assert (a.cap, b.cap) == (0.5, 0.5)  # the second gets what is left
    assert a.lease != b.lease
    spent = refused(store.admit(key, "m", now=T0 + 2, estimate=0.25), 403).reason
    assert "spent and does not renew: ask the gateway's operator" in spent  # a total budget
    monthly, _ = store.create_key("monthly", now=T0, budget=0.01)
    admitted(store.admit(monthly, "m", now=T0, estimate=0.5))
    assert "renews on the 1st" in refused(store.admit(monthly, "m", now=T0, estimate=0.5), 403).reason
    store.settle(a.lease, record(key.id, T0, cost=0.25))  # frees 0.5, spends 0.25
    assert store.spent(key.id, now=T0 + 3) == 0.25
    assert admitted(store.admit(key, "m", now=T0 + 3, estimate=1.0)).cap == 0.25


def test_a_budget_cannot_be_kept_on_an_unpriced_model(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, budget=1.0)
    assert "no known prices" in refused(store.admit(key, "m", now=T0, estimate=None), 403).reason


@pytest.mark.parametrize(
    ("period", "counted"),
    [("day", [0.5]), ("week", [0.5, 0.25]), ("month", [0.5, 0.25, 0.125]), ("total", [0.5, 0.25, 0.125, 0.0625])],
)  # fmt: skip
def test_spend_counts_the_current_period_only(
    store: Store, period: str, counted: list[float]
) -> None:
    key, _ = store.create_key("ci", now=T0 - 90 * DAY, budget=100.0, period=period)  # type: ignore[arg-type]
    # today, earlier this ISO week (Monday), earlier this month, last year
    for at, cost in [(T0, 0.5), (T0 - 2 * DAY, 0.25), (T0 - 3.5 * DAY, 0.125), (T0 - 365 * DAY, 0.0625)]:  # fmt: skip
        store.settle(None, record(key.id, at, cost=cost))
    assert store.spent(key.id, now=T0 + 60) == sum(counted)


def test_a_lease_nobody_settles_expires(
    make_store: Callable[..., tuple[Store, str | None]],
) -> None:
    store, _ = make_store(lease_ttl=30.0)
    key, _ = store.create_key("ci", now=T0, budget=1.0)
    admitted(store.admit(key, "m", now=T0, estimate=1.0))  # its worker dies: never settled
    refused(store.admit(key, "m", now=T0 + 29, estimate=1.0), 403)
    assert admitted(store.admit(key, "m", now=T0 + 31, estimate=1.0)).cap == 1.0


def test_settling_an_unknown_or_settled_lease_frees_nothing_twice(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, budget=1.0)
    a = admitted(store.admit(key, "m", now=T0, estimate=0.5))
    store.settle(a.lease, record(key.id, T0, cost=0.5))
    store.settle(a.lease, record(key.id, T0, cost=0.0))  # a second settle of the same lease
    store.settle("l-unknown", record(key.id, T0, cost=0.0))
    assert admitted(store.admit(key, "m", now=T0 + 1, estimate=1.0)).cap == 0.5


def test_records_round_trip_filter_and_order(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0)
    hostile = "x'); DROP TABLE ledger_keys; --"  # client text reaches the store
    kept = [
        UsageRecord(
            at=T0 + 1, key_id=key.id, route="/v1/messages", model=hostile, deployment="east",
            input_tokens=10, cached_tokens=20, cache_write_tokens=30, output_tokens=40,
            reasoning_tokens=5, cost=0.125, latency=1.5, first_token=0.25, outcome="cut",
            estimated=True, attempts=3, tried=("west", hostile),
        ),
        record(key.id, T0 + 3, outcome="error:timeout"),
        record(None, T0 + 2),
        record(key.id, T0 + 3, outcome="ok", route="second at the same time"),
    ]  # fmt: skip
    for r in kept:
        store.settle(None, r)
    assert store.records(since=T0, until=T0 + 10) == [kept[1], kept[3], kept[2], kept[0]]
    assert store.records(since=T0, until=T0 + 10, key_id=key.id, limit=2) == [kept[1], kept[3]]
    assert store.records(since=T0 + 2, until=T0 + 3) == [kept[2]]  # [since, until)
    assert store.list_keys() == [key]


def test_failures_are_the_newest_records_not_ok(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0)
    outcomes = ["ok", "cut", "error:timeout", "ok", "refused:budget", "disconnected", "ok"]
    kept = [record(key.id, T0 + i, outcome=o) for i, o in enumerate(outcomes)]
    for r in kept:
        store.settle(None, r)
    assert store.failures() == [kept[5], kept[4], kept[2], kept[1]]
    assert store.failures(limit=2) == [kept[5], kept[4]]
    store.prune(before=T0 + 3)
    assert store.failures() == [kept[5], kept[4]]


@pytest.mark.parametrize(
    "by", [(), ("key",), ("model",), ("day",), ("deployment",), ("key", "model", "day")]
)
def test_report_equals_the_reference_totals(store: Store, by: tuple[str, ...]) -> None:
    key, _ = store.create_key("ci", now=T0)
    other, _ = store.create_key("other", now=T0)
    rows = [
        record(
            key.id, T0, model="a", deployment="east", input_tokens=3, cost=0.5, attempts=3,
            tried=("south", "west"),
        ),
        record(key.id, T0 + DAY, model="b", output_tokens=7, cost=None, outcome="cut"),
        record(
            other.id, T0 + 2 * DAY, model="a", deployment="west", cached_tokens=2, cost=0.25,
            estimated=True, attempts=2, tried=("south",),
        ),
        record(None, T0 + 2 * DAY + 5, model="a", reasoning_tokens=4, cache_write_tokens=1),
        record(key.id, T0 + 10 * DAY, model="a", cost=8.0),  # outside the range
    ]  # fmt: skip
    for r in rows:
        store.settle(None, r)
    report = store.report(by, since=T0, until=T0 + 5 * DAY)  # type: ignore[arg-type]
    assert report == totals(rows[:4], by)  # type: ignore[arg-type]
    assert report and sum(row["requests"] for row in report) == 4  # type: ignore[misc]
    assert sum(row["failovers"] for row in report) == 3  # type: ignore[misc]
    assert sum(row["estimated"] for row in report) == 1  # type: ignore[misc]
    assert sum(row["estimated_cost"] for row in report) == 0.25  # type: ignore[misc]
    if by == ("deployment",):  # each failed attempt on the deployment that failed
        failed = {row["deployment"]: (row["requests"], row["failovers"]) for row in report}
        assert failed == {None: (2, 0), "east": (1, 0), "south": (0, 2), "west": (1, 1)}
    assert store.report(by, since=T0 + 50 * DAY, until=T0 + 60 * DAY) == []  # type: ignore[arg-type]
    one = store.report(by, since=T0, until=T0 + 5 * DAY, key_id=key.id)  # type: ignore[arg-type]
    assert one == totals(rows[:2], by)  # type: ignore[arg-type]


def test_settling_many_at_once_is_settling_each(store: Store) -> None:
    key, _ = store.create_key("ci", now=T0, budget=1.0, period="day", tpm=10_000)
    a = admitted(store.admit(key, "m", now=T0, estimate=0.5))
    b = admitted(store.admit(key, "m", now=T0 + 1, estimate=0.25))
    batch = [
        (a.lease, record(key.id, T0, cost=0.125, output_tokens=100)),
        (b.lease, record(key.id, T0 + 1, cost=0.0625, output_tokens=50)),
        (None, record(key.id, T0 - 2 * DAY, cost=0.5)),  # yesterday: not today's spend
        (None, record("k-unknown", T0, cost=0.5)),  # a key the store does not hold
    ]
    store.settle_many(batch)
    assert store.spent(key.id, now=T0 + 2) == 0.1875
    # both reservations freed: what is left of the budget is the whole cap again
    assert admitted(store.admit(key, "m", now=T0 + 2, estimate=1.0)).cap == 1.0 - 0.1875
    kept = store.records(since=0, until=T0 + DAY)
    assert sorted(kept, key=lambda r: (r.at, r.key_id or "")) == sorted(
        (r for _, r in batch), key=lambda r: (r.at, r.key_id or "")
    )
    store.settle_many([])


def test_pruning_forgets_old_records_and_keeps_each_periods_spend(store: Store) -> None:
    monthly, _ = store.create_key("ci", now=T0 - 400 * DAY, budget=100.0, period="month")
    forever, _ = store.create_key("all", now=T0 - 400 * DAY, budget=100.0, period="total")
    early = T0 - 2.5 * DAY  # this month, before the cut
    for key in (monthly, forever):
        for at, cost in [(T0 - 365 * DAY, 8.0), (early, 4.0), (T0 - DAY, 2.0), (T0, 1.0)]:
            store.settle(None, record(key.id, at, cost=cost))
    assert store.prune(before=T0 - 2 * DAY) == 4  # each key's last year and early records
    assert sorted(r.at for r in store.records(since=0, until=T0 + 1)) == [T0 - DAY] * 2 + [T0] * 2
    assert store.spent(monthly.id, now=T0) == 7.0 and store.spent(forever.id, now=T0) == 15.0
    # a reservation in flight holds its money through a prune that passes its arrival
    in_flight = admitted(store.admit(monthly, "m", now=T0 - 100, estimate=0.5))
    assert store.prune(before=T0) == 2
    assert admitted(store.admit(monthly, "m", now=T0, estimate=100.0)).cap == 100.0 - 7.0 - 0.5
    store.settle(in_flight.lease, record(monthly.id, T0 - 100, cost=0.25))
    assert store.spent(monthly.id, now=T0) == 7.25
