"""The pages built from whole analyses: Summary, Info, the HTML report and the raw-trace preview."""
