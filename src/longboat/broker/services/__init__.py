"""The broker's background services: delay levels delivered on time (`delay_schedule`),
timer messages of both protocols and their recall (`delivery_timer`), transactional halves
and their check-backs (`transactions`), replication (`ha`), registration with the name
servers (`registration`), and the metrics endpoint (`metrics`)."""
