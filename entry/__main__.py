"""``python -m streamfn`` is the ``streamfn`` command.

This folder is installed as the ``streamfn`` namespace's own portion and holds
only this module (no ``__init__.py``), so ``streamfn`` stays a namespace
package that ``streamfn.core``, ``streamfn.local`` and the rest share.
"""

from streamfn.local.cli import main

raise SystemExit(main())
