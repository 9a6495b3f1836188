"""What aibuddy knows of git below the services: the lines it keeps in .gitattributes and
.gitignore (files.py), three-way merging's primitives (merging.py) and the conflict markers git
leaves (conflict_markers.py). The merge driver and team vaults, which use the services, are app/'s."""
