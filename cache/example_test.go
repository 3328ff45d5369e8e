package cache_test

import (
	"fmt"
	"net/http"

	"tollgate/cache"
)

// Two requests that differ only in an unlisted query parameter and in the
// percent-encoding of a listed one share an entry; another value of the
// listed parameter does not.
func ExampleDigest() {
	params, _ := cache.ParseParams([]string{"method.request.querystring.q"})
	key := func(rawQuery string) string {
		return cache.Digest(params, &cache.Request{
			APIID: "a1b2c3d4e5", Stage: "prod", Generation: 0, Method: "GET",
			Host: "a1b2c3d4e5.execute-api.localhost", Path: "/prod/search", RawQuery: rawQuery, Header: http.Header{},
		})
	}
	a, b, c := key("q=one"), key("utm_source=x&q=%6Fne"), key("q=two")
	fmt.Println(len(a))
	fmt.Println(a == b, a == c)
	// Output:
	// 64
	// true false
}
