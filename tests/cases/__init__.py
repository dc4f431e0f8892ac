"""Real cases kept in this repository (see README.md); :mod:`tests.cases.gaps` lists those the tool does not get right yet."""
