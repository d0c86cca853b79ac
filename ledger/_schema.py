"""The ledger's tables, as numbered migrations applied when a store opens.

A store records the version it reached in ``ledger_schema``; opening applies the
migrations it lacks, inside the engine's write transaction, so several workers
opening one store at once migrate it once. A store made by a newer streamfn is
refused (an older one would misread it), naming the fix.
"""

from __future__ import annotations

from ._dialect import Dialect

__all__ = ["MIGRATIONS", "SCHEMA_TABLE", "migration"]

SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS ledger_schema (version INTEGER NOT NULL)"

#: each entry takes a store from version i to i + 1; never edit one that shipped
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE ledger_keys (
            seq {serial},
            id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            created_at {float} NOT NULL,
            models TEXT NOT NULL,
            budget {float},
            period TEXT NOT NULL,
            rpm BIGINT,
            tpm BIGINT,
            expires_at {float},
            revoked_at {float}
        )""",
        # one row per admitted request: its arrival (the requests-per-minute window)
        # and, until it is settled or its lease expires, the money it holds
        """CREATE TABLE ledger_leases (
            lease TEXT PRIMARY KEY,
            key_id TEXT NOT NULL,
            at {float} NOT NULL,
            reserved {float} NOT NULL,
            expires_at {float} NOT NULL,
            settled INTEGER NOT NULL
        )""",
        "CREATE INDEX ledger_leases_key_at ON ledger_leases (key_id, at)",
        """CREATE TABLE ledger_usage (
            seq {serial},
            at {float} NOT NULL,
            key_id TEXT,
            route TEXT NOT NULL,
            model TEXT NOT NULL,
            deployment TEXT,
            input_tokens BIGINT NOT NULL,
            cached_tokens BIGINT NOT NULL,
            cache_write_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            reasoning_tokens BIGINT NOT NULL,
            cost {float},
            latency {float} NOT NULL,
            first_token {float},
            outcome TEXT NOT NULL,
            ended {float} NOT NULL
        )""",
        "CREATE INDEX ledger_usage_key_at ON ledger_usage (key_id, at)",
        # a request's tokens count against tokens per minute from when it ended
        "CREATE INDEX ledger_usage_key_ended ON ledger_usage (key_id, ended)",
        # what each key spent in each period of its budget (the period's first second),
        # kept as requests settle: admission reads one row
        """CREATE TABLE ledger_spend (
            key_id TEXT NOT NULL,
            since {float} NOT NULL,
            spent {float} NOT NULL,
            PRIMARY KEY (key_id, since)
        )""",
        "CREATE INDEX ledger_usage_at ON ledger_usage (at)",
    ),
    (
        # admission sums what the requests in flight hold: those rows only, not the
        # minute's settled ones kept for the requests-per-minute window
        "CREATE INDEX ledger_leases_open ON ledger_leases (key_id) WHERE settled = 0",
        # settling deletes the leases no admission reads any more, by age
        "CREATE INDEX ledger_leases_at ON ledger_leases (at)",
    ),
    (
        # a record billed at the gateway's estimate (its upstream reported no usage), and
        # the upstreams a request was sent to: the deployments that failed over before
        # the one it names (a JSON list); rows kept before these columns were one attempt
        "ALTER TABLE ledger_usage ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE ledger_usage ADD COLUMN attempts BIGINT NOT NULL DEFAULT 1",
        "ALTER TABLE ledger_usage ADD COLUMN tried TEXT NOT NULL DEFAULT '[]'",
    ),
    (
        # the dashboard's recent errors: the newest records not ``ok``, from one index
        "CREATE INDEX ledger_usage_failed_at ON ledger_usage (at) WHERE outcome <> 'ok'",
    ),
)


def migration(step: tuple[str, ...], dialect: Dialect) -> list[str]:
    """``step``'s statements in ``dialect``'s column types."""
    return [s.format(serial=dialect.serial, float=dialect.float_type) for s in step]
