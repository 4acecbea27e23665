"""Helpers shared by hookcode's own tests (not part of the public test kit)."""
