"""What users can set for the analyses: the options an analysis takes (``options``), op and kernel
categories (``categories``), and the small user files that override built-in tables (``settings_files``)."""
