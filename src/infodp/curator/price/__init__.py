"""Step 5, price: what a query costs (its measurements' privacy profiles composed), priced
queries remembered, their layout, and accuracy estimated before spending."""
