module reseed-lab/rand_go

go 1.23
