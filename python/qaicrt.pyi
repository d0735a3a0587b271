# stub: filled below
