"""Client keys, budgets and the record of use, for a gateway a team runs.

A `Store` keeps client keys (hashed), admits each request against its key's
limits in one atomic step, and keeps one `UsageRecord` per request. Stores:
`MemoryStore` (tests, one process), `SQLiteStore` (one host, every worker; the
default) and `PostgresStore` (several hosts) behind the same interface;
`open_store` opens the one a URL names, `default_store_url` the one used when
none is named.
"""

from ._locate import default_store_url, open_store
from ._memory import MemoryStore
from ._postgres import PostgresStore
from ._records import Admitted, ClientKey, Refused, UsageRecord
from ._sql import StoreError
from ._sqlite import SQLiteStore
from ._store import Store

__all__ = [
    "Admitted",
    "ClientKey",
    "MemoryStore",
    "PostgresStore",
    "Refused",
    "SQLiteStore",
    "Store",
    "StoreError",
    "UsageRecord",
    "default_store_url",
    "open_store",
]
