"""What runs a publish: lease, the job, calls under a deadline, worker, arming, queue, clock."""
