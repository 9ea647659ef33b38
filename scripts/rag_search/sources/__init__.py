"""Where documents come from: personal roots, and (docs) git, web and local sources."""
