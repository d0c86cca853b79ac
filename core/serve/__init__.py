"""The server role as a sans-I/O codec: client requests in, dialect-encoded events out."""
