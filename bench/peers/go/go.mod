module swarm.bench/peers/go

go 1.19
