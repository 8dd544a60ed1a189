// Command jptr prints the part of a JSON document a JSON Pointer refers to.
//
//	jptr [-r] POINTER [FILE]   print the value at POINTER (FILE or stdin)
//	jptr -list [FILE]          print the pointer of every value
//
// -r prints a string value without JSON quoting. POINTER may also be given
// in URI fragment form ("#/a%20b").
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"jsonptr"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jptr", flag.ContinueOnError)
	fs.SetOutput(stderr)
	raw := fs.Bool("r", false, "print strings without quotes")
	list := fs.Bool("list", false, "list the pointers of all values")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	var ptrText string
	if !*list {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "usage: jptr [-r] POINTER [FILE] | jptr -list [FILE]")
			return 2
		}
		ptrText, rest = rest[0], rest[1:]
	}
	if len(rest) > 1 {
		fmt.Fprintln(stderr, "jptr: too many arguments")
		return 2
	}
	input := stdin
	if len(rest) == 1 {
		f, err := os.Open(rest[0])
		if err != nil {
			fmt.Fprintln(stderr, "jptr:", err)
			return 1
		}
		defer f.Close()
		input = f
	}
	doc, err := decode(input)
	if err != nil {
		fmt.Fprintln(stderr, "jptr: reading JSON:", err)
		return 1
	}
	if *list {
		_ = jsonptr.Walk(doc, func(p jsonptr.Pointer, _ interface{}) error {
			fmt.Fprintln(stdout, p)
			return nil
		})
		return 0
	}
	var p jsonptr.Pointer
	if strings.HasPrefix(ptrText, "#") {
		p, err = jsonptr.ParseFragment(ptrText)
	} else {
		p, err = jsonptr.Parse(ptrText)
	}
	if err != nil {
		fmt.Fprintln(stderr, "jptr:", err)
		return 2
	}
	v, err := jsonptr.Get(doc, p)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if errors.Is(err, jsonptr.ErrNotFound) {
			return 3
		}
		return 1
	}
	if s, ok := v.(string); ok && *raw {
		fmt.Fprintln(stdout, s)
		return 0
	}
	out, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(stderr, "jptr:", err)
		return 1
	}
	fmt.Fprintln(stdout, string(out))
	return 0
}

func decode(r io.Reader) (interface{}, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc interface{}
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return doc, nil
}
