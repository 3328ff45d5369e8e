package script

import (
	"context"
	_ "embed"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"tollgate/internal/redistest"
	"tollgate/script/internal/wirespec"
)

//go:embed testdata/echo.lua
var echoSource string

// echoScript is the library but its dispatch, then testdata/echo.lua.
var echoScript = func() *redis.Script {
	var b strings.Builder
	for _, name := range Files[:len(Files)-1] {
		src, err := files.ReadFile("lua/" + name)
		if err != nil {
			panic(err)
		}
		b.Write(src)
		b.WriteString("\n")
	}
	b.WriteString(echoSource)
	return redis.NewScript(b.String())
}()

func TestWireGeneratedFilesAreCurrent(t *testing.T) {
	src, err := os.ReadFile("wire.go")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := wirespec.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	goSrc, err := wirespec.RenderGo(sp)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"wire_gen.go": goSrc, "lua/wire.lua": wirespec.RenderLua(sp)} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is not what wire.go generates: run go generate ./script", file)
		}
	}
	if len(layouts) != len(sp.Layouts) {
		t.Errorf("layouts: got %d, want %d", len(layouts), len(sp.Layouts))
	}
}

// fill sets every field of the layout v points to at random (integers
// within a double's exact range, since Lua numbers are doubles), keeping
// the constant of a marked state.
func fill(v reflect.Value, r *rand.Rand) {
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if _, ok := sf.Tag.Lookup("wire"); ok {
			c, _ := strconv.Atoi(strings.TrimPrefix(sf.Tag.Get("wire"), "="))
			f.SetUint(uint64(c))
			continue
		}
		switch f.Kind() {
		case reflect.Uint8, reflect.Uint16, reflect.Uint32:
			f.SetUint(r.Uint64() >> (64 - 8*f.Type().Size()))
		case reflect.Int32:
			f.SetInt(int64(int32(r.Uint32())))
		case reflect.Int64:
			f.SetInt(r.Int64N(1<<54) - 1<<53)
		case reflect.Float64:
			f.SetFloat(r.NormFloat64() * math.Pow(10, float64(r.IntN(30)-10)))
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetUint(uint64(r.IntN(256)))
			}
		}
	}
}

// luaValue formats a Go field as echo.lua does ("%.17g", or # and the
// length of a string).
func luaValue(f reflect.Value) string {
	switch f.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return strconv.FormatFloat(float64(f.Uint()), 'g', 17, 64)
	case reflect.Int32, reflect.Int64:
		return strconv.FormatFloat(float64(f.Int()), 'g', 17, 64)
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'g', 17, 64)
	default:
		return "#" + strconv.Itoa(f.Len())
	}
}

// Every layout survives Go-encode → Lua-decode → Lua-encode → Go-decode,
// and Lua reads each field under its own name with its own value.
func TestWireRoundTrip(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.MustClient(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	for name, make := range layouts {
		for range 20 {
			in := make()
			fill(reflect.ValueOf(in).Elem(), r)
			packed := in.Append(nil)
			reply, err := echoScript.Run(ctx, rdb, nil, wirespec.Snake(name), "", packed).StringSlice()
			if err != nil {
				t.Fatalf("%s: echo: %v", name, err)
			}
			out := make()
			rest, err := out.Decode(reply[0])
			if err != nil || rest != "" {
				t.Fatalf("%s: decode of Lua's packing: rest %d bytes, %v", name, len(rest), err)
			}
			if !reflect.DeepEqual(in, out) {
				t.Fatalf("%s: round trip: got %+v, want %+v", name, out, in)
			}
			lua := map[string]string{}
			for _, kv := range strings.Split(reply[1], ";") {
				k, v, _ := strings.Cut(kv, "=")
				lua[k] = v
			}
			v := reflect.ValueOf(in).Elem()
			for i := range v.NumField() {
				sf := v.Type().Field(i)
				if _, ok := sf.Tag.Lookup("wire"); ok {
					continue
				}
				key := wirespec.Snake(sf.Name)
				if got, want := lua[key], luaValue(v.Field(i)); got != want {
					t.Fatalf("%s.%s: Lua read %q as %s, want %s", name, sf.Name, key, got, want)
				}
			}
		}
	}
}

func TestStateOfAnotherKindDoesNotDecode(t *testing.T) {
	t.Parallel()
	b := (&BucketState{Tokens: 1}).Append(nil)
	var q QuotaState
	if _, err := q.Decode(string(b)); err == nil {
		t.Fatal("a bucket state decoded as a quota state")
	}
	if _, err := q.Decode("\x02"); err == nil {
		t.Fatal("a short value decoded")
	}
}

func TestLibraryLoads(t *testing.T) {
	t.Parallel()
	rdb, _ := redistest.MustClient(t)
	if err := redis.NewScript(Source).Load(context.Background(), rdb).Err(); err != nil {
		t.Fatalf("the library does not load: %v", err)
	}
	err := redis.NewScript(Source).Run(context.Background(), rdb, nil, "nope", "").Err()
	if err == nil || !strings.Contains(err.Error(), "unknown operation") {
		t.Fatalf("an unknown operation: got %v, want an error naming it", err)
	}
}
