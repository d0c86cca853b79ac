"""Trio shell: HTTP/1.1 over h11 for streamfn calls."""
