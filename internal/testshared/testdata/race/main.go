// Command race says whether it was built with the race detector: the
// program of testshared's test of Build.
package main

import "fmt"

func main() { fmt.Println("race detector:", raceDetector) }
