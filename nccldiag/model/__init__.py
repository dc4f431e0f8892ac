"""Values with no I/O, shared by every side: findings and exit codes, errors, raw node outputs."""
