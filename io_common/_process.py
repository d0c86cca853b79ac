"""What a shell's clients take from the process unless told otherwise, named once for
every shell: ``os.environ``, ``random.random``, the UTC wall clock and the default
SSL context (verification on, system CAs).

The core reads none of these itself (`streamfn.client.Ambient`);
the trio, asyncio and blocking shells each set ``ambient = PROCESS``.
"""

from __future__ import annotations

import os
import random
import ssl
from datetime import UTC, datetime
from functools import partial
from typing import Final

from streamfn.client import Ambient

__all__ = ["PROCESS"]

PROCESS: Final = Ambient(
    environ=os.environ,
    rand=random.random,
    wall_clock=partial(datetime.now, UTC),
    ssl_context=ssl.create_default_context,
)
