"""The window's docks, one module each (Properties, and the Inputs/Profile/Compare/Runs/Log docks as they
are built; `coming.py` holds the placeholders for those not built yet)."""
