"""HTTP/1.1 for provider calls, sans I/O (needs h11): the exchange, the tunnel, the steps a shell answers."""
