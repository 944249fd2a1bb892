"""Pure logic, no I/O: states, keys, admission, backoff, timing, errors."""
