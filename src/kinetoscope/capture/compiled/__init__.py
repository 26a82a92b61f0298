"""What torch.compile generated and ran: the kernel catalog, the copied artifacts and their provenance."""
