#!/usr/bin/env python3
"""Test fixture: prints what it would do (no PDF library needed)."""
import sys

if len(sys.argv) > 2 and sys.argv[1] == "--list":
    print("fields of", sys.argv[2])
else:
    print("filled", " ".join(sys.argv[1:]))
