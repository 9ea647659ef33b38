"""What keeps the user's secrets and the agent safe: credentials kept out of the index, text that talks to the AI
flagged, the index read in a child process.
"""
