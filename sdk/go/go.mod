module github.com/tollgate-gateway/tollgate/sdk/go

go 1.19
