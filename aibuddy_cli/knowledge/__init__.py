"""Knowledge documents: import, outline, review, visibility, search index, section reader."""
