"""`python -m streamfn.local` is the `streamfn` command."""

from .cli import main

raise SystemExit(main())
