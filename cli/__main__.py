"""``python -m streamfn.cli`` is the ``streamfn`` command (as is ``python -m streamfn``)."""

from . import main

raise SystemExit(main())
