// A Veles-style detector test of an invented family, for TestVelesExamplesFixture: only parsed,
// never compiled.
package zorp_test

func TestDetector(t *testing.T) {
	cases := []struct {
		name  string
		input string
		want  []veles.Secret
	}{
		{name: "token", input: "ZORP_TOKEN=zorp_Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3", want: []veles.Secret{zorp.Token{Token: "zorp_Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3"}}},
		{name: "none", input: "no token here", want: nil},
		{name: "id only", input: "zorp_id: 87654321-4321-4321-4321-210987654321", want: []veles.Secret{zorp.Creds{RoleID: "87654321-4321-4321-4321-210987654321"}}},
		{name: "empty password", input: "http://zorp:@zorp.test", want: []veles.Secret{zorp.URL{FullURL: "http://zorp:@zorp.test"}}},
		{name: "swapped labels", input: "ZorpPublicKey: \"Kq9mVx4LpT8sZb3N\"\nZorpPrivateKey: \"R2d7wY6cHf1JgE5aUo0iBfPq\"",
			want: []veles.Secret{zorp.Key{PrivateB64: "Kq9mVx4LpT8sZb3N", PublicB64: "R2d7wY6cHf1JgE5aUo0iBfPq"}}},
	}
	_ = cases
}

func TestVault(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		expected []veles.Secret
	}{
		{name: "expected", input: "zorp.Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3", expected: []veles.Secret{zorp.Token{Token: "zorp.Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3"}}},
		{name: "expected none", input: "zorp.short", expected: nil},
	}
	_ = tests
}

// TestDetector_falseNegatives lists texts the detector is known to miss.
func TestDetector_falseNegatives(t *testing.T) {
	cases := []struct {
		name  string
		input string
	}{
		{name: "encoded", input: "ZXhhbXBsZQ=="},
	}
	_ = cases
}
