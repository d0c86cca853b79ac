"""Provider wire formats: request builders and response state machines, all pure."""
