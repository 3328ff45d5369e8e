package plans

// Page selects one page of a list: Position is the opaque token from the
// previous page ("" for the first), Limit the page size (1..500; the admin
// passes 25 when the caller gives none).
type Page struct {
	Position string
	Limit    int
}
