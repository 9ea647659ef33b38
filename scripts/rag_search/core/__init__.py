"""What every layer stands on: settings, typed errors, the data dir, dates, atomic and private files, locks, logging
and progress, the scripts' launch and command line, the libraries' telemetry switches.
"""
