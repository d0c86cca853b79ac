"""Client keys, budgets and the record of use, for a gateway a team runs.

A `Store` keeps client keys (hashed), admits each request against its key's
limits in one atomic step, and keeps one `UsageRecord` per request. Stores:
`MemoryStore` (tests, one process); SQLite (one host, every worker) and
PostgreSQL (several hosts) behind the same interface.
"""

from ._memory import MemoryStore
from ._records import Admitted, ClientKey, Refused, UsageRecord
from ._store import Store

__all__ = [
    "Admitted",
    "ClientKey",
    "MemoryStore",
    "Refused",
    "Store",
    "UsageRecord",
]
