"""`python -m tracker.estimate.calibration [--write | --check]`: see tracker/estimate/calibration/stored.py."""

from tracker.estimate.calibration.stored import main

raise SystemExit(main())
