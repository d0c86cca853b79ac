"""Local CTranslate2 models behind the same bytes-in/events-out contract."""
