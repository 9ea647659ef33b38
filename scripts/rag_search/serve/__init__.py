"""The scripts' answers, cold or warm: what search.py, get.py, status.py and memory.py print, the resident searcher and
its client, the MCP server, the daily timer.
"""
