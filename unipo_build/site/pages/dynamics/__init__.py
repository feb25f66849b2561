"""What happened during training: dynamics, sampling, the critic, advantage noise."""
