"""The real-data suite: the judge of every accuracy or default change (python -m benches.real_suite).

Real multi-label sets built reproducibly from public sources (Mulan's repository at a pinned commit;
the Debian archive's package metadata through apt), each method run with its defaults in a fresh
process, one JSON per run. See __main__.py for the command line, catalogue.py for the sets."""
