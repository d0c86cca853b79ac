"""The wire formats, one package per dialect: each holds its client side (request
builder, response machine) and its server side (inbound parser, encoder), and the
tables both read. `open_call` finds a format's package by its api name."""

__all__: list[str] = []
