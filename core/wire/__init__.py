"""Wire decoders: bytes in, frames out, one ``feed()``/``end()`` shape; no I/O."""
